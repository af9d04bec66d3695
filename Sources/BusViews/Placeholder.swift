/// Placeholder until the view runtime lands (issue 4).
enum BusViewsPlaceholder {}
