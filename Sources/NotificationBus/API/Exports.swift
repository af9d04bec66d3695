// The wire protocol's types (names, patterns, headers, `BusNotification`, the codec) are part of this
// library's API: `import NotificationBus` brings them, as it did before NBP1 became its own module.
@_exported import NBP1
