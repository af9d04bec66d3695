/// Joins a command's positional arguments into one before ArgumentParser sees them, and splits
/// them again after: linear in their count.
///
/// Why: ArgumentParser takes a repeating positional argument in time quadratic in its count (each
/// value widens a set of input origins and is removed from the input one by one): `nbus subscribe`
/// with 10,000 patterns spent 70 s of a debug build parsing before it started. Joined with NUL, a
/// byte no `argv` string can hold (so no argument can contain it, and the join is unambiguous), the
/// parser sees one positional value whatever the count.
package enum PositionalJoin {
    /// What joins the values: NUL, which no command-line argument can contain.
    package static let separator: Character = "\u{0}"

    /// `arguments` with every positional value of the command joined into one, at the place of
    /// the first. A dash-led argument is an option: it takes the next argument as its value unless
    /// it is one of `flags`, is written `--name=value`, or the next argument is dash-led itself.
    /// Counting an unlisted flag as an option only joins less (the argument after it stays apart,
    /// after the joined ones, and `split` reads both); a value is never taken for a positional. After `--`, every
    /// argument is positional.
    package static func join(_ arguments: [String], flags: Set<String>) -> [String] {
        var kept: [String] = []
        var positionals: [Substring] = []
        var joinedAt: Int?
        var index = arguments.startIndex
        var optionsEnded = false
        func takePositional(_ argument: String) {
            if joinedAt == nil {
                joinedAt = kept.count
                kept.append("")
            }
            positionals.append(Substring(argument))
        }
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                takePositional(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            kept.append(argument)
            guard !flags.contains(argument), !argument.contains("="), index < arguments.endIndex,
                !arguments[index].hasPrefix("-")
            else { continue }
            kept.append(arguments[index])  // the option's value
            index += 1
        }
        if let joinedAt { kept[joinedAt] = positionals.joined(separator: String(separator)) }
        return kept
    }

    /// The positional values `join` put together, in order (an argument parsed without joining
    /// comes back as itself).
    package static func split(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: separator, omittingEmptySubsequences: false).map(String.init) }
    }
}
