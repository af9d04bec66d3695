// BusOperations operates what BusServices runs: an application that links it gets BusService,
// BrokerService and the LocalizedError conformances too, as before they had a product of their own.
@_exported import BusServices
