/// Placeholder until the throughput scenario lands.
enum BusBenchPlaceholder {}
