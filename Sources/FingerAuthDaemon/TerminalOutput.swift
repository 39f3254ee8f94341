import FingerAuthCore

/// What every admin command prints goes through here: this module's `print` hides the
/// standard library's, so a value read from the registry (a record's service, a reason, a
/// host name a key holder chose) cannot carry an escape sequence to the admin's terminal
/// (`TerminalText`). The command's own line breaks stay; table cells and JSON escape
/// theirs too (`Admin.printTable`, `JSONEncoding`).
func print(_ text: String) {
    Swift.print(TerminalText.escaped(text, keepingLineBreaks: true))
}
