import Foundation

// Checks of the SVG the charts write. A small well-formedness check: every
// element closed in order, one root element, attribute values quoted, and
// `&` only as the start of an entity; not an XML parser (scripts/test.sh
// runs xmllint on real output), enough to catch a writer that forgets to
// close or escape. And the numbers of every coordinate attribute.

/// What is wrong with `document` as XML, or nil when its tags balance.
func xmlProblem(_ document: String) -> String? {
    let text = Array(document.unicodeScalars)
    var open: [String] = []
    var roots = 0
    var i = 0
    func starts(_ prefix: String, at index: Int) -> Bool {
        let scalars = Array(prefix.unicodeScalars)
        return index + scalars.count <= text.count && Array(text[index..<index + scalars.count]) == scalars
    }
    func find(_ needle: String, from index: Int) -> Int? {
        var j = index
        while j < text.count {
            if starts(needle, at: j) { return j }
            j += 1
        }
        return nil
    }
    while i < text.count {
        let c = text[i]
        if c == "&" {
            guard let end = find(";", from: i) else { return "an & with no ; after it" }
            let entity = String(String.UnicodeScalarView(text[i...end]))
            guard ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(entity) || entity.hasPrefix("&#") else {
                return "unknown entity \(entity)"
            }
            i = end + 1
            continue
        }
        if c == ">" { return "a > outside a tag at \(i)" }
        guard c == "<" else {
            if open.isEmpty && !(c == " " || c == "\n" || c == "\t" || c == "\r") {
                return "text outside the root element at \(i)"
            }
            i += 1
            continue
        }
        if starts("<?", at: i) {
            guard let end = find("?>", from: i) else { return "an unclosed <?" }
            i = end + 2
            continue
        }
        if starts("<!--", at: i) {
            guard let end = find("-->", from: i) else { return "an unclosed comment" }
            i = end + 3
            continue
        }
        // A tag: scan to its '>', outside quoted attribute values.
        var j = i + 1
        var quote: Unicode.Scalar?
        while j < text.count {
            let d = text[j]
            if let q = quote {
                if d == q { quote = nil } else if d == "<" { return "a < inside an attribute value at \(j)" }
            } else if d == "\"" || d == "'" {
                quote = d
            } else if d == "=" {
                guard j + 1 < text.count, text[j + 1] == "\"" || text[j + 1] == "'" else {
                    return "an unquoted attribute value at \(j)"
                }
            } else if d == ">" {
                break
            } else if d == "<" {
                return "a < inside a tag at \(j)"
            }
            j += 1
        }
        guard j < text.count else { return "an unclosed tag at \(i)" }
        let body = String(String.UnicodeScalarView(text[(i + 1)..<j]))
        if body.hasPrefix("/") {
            let name = String(body.dropFirst()).trimmingCharacters()
            guard let last = open.popLast() else { return "</\(name)> closes nothing" }
            guard last == name else { return "</\(name)> closes <\(last)>" }
        } else {
            let name = String(body.prefix { $0 != " " && $0 != "/" && $0 != "\n" })
            guard !name.isEmpty else { return "a tag with no name at \(i)" }
            if open.isEmpty {
                roots += 1
                if roots > 1 { return "a second root element <\(name)>" }
            }
            if !body.hasSuffix("/") { open.append(name) }
        }
        i = j + 1
    }
    if let last = open.last { return "<\(last)> is never closed" }
    return roots == 1 ? nil : "no root element"
}

extension String {
    /// The string without spaces and line breaks at either end.
    fileprivate func trimmingCharacters() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}

/// Every number written in a coordinate attribute (x, y, x1, y1, x2, y2,
/// cx, cy, r, width, height, and each number of a path's d), as written.
func coordinateNumbers(_ document: String) -> [String] {
    let attribute = try! Regex(#" (x|y|x1|y1|x2|y2|cx|cy|r|width|height|d)="([^"]*)""#)
    var numbers: [String] = []
    for match in document.matches(of: attribute) {
        guard let value = match.output[2].substring else { continue }
        let name = match.output[1].substring ?? ""
        if name == "d" {
            numbers += value.split(separator: " ").map { String($0.drop { $0 == "M" || $0 == "L" }) }
        } else {
            numbers.append(String(value))
        }
    }
    return numbers
}
