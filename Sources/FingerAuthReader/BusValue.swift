import CFPrint

/// A D-Bus value as Swift sees it, read out of a `GVariant` in one place. Only the types
/// fprintd and logind use are taken apart; anything else stays `.other` with its type
/// string, so that a reply of an unexpected shape is recognised as such and never read as
/// something it is not.
package indirect enum BusValue: Equatable, Sendable {
    case string(String)
    case objectPath(String)
    case bool(Bool)
    case uint32(UInt32)
    case int32(Int32)
    case array([BusValue])
    case tuple([BusValue])
    case variant(BusValue)
    case other(type: String)

    /// Reads `variant` (not consumed: the caller keeps its reference).
    package init(_ variant: OpaquePointer) {
        let type = g_variant_get_type_string(variant).map { String(cString: $0) } ?? ""
        switch type.first {
        case "s"?, "o"?:
            let text = g_variant_get_string(variant, nil).map { String(cString: $0) } ?? ""
            self = type == "s" ? .string(text) : .objectPath(text)
        case "b"?: self = .bool(g_variant_get_boolean(variant) != 0)
        case "u"?: self = .uint32(g_variant_get_uint32(variant))
        case "i"?: self = .int32(g_variant_get_int32(variant))
        case "v"?:
            guard let inner = g_variant_get_variant(variant) else {
                self = .other(type: type)
                return
            }
            defer { g_variant_unref(inner) }
            self = .variant(BusValue(inner))
        case "a"?, "("?:
            var items: [BusValue] = []
            let count = min(Int(g_variant_n_children(variant)), BusValue.maxChildren)
            for index in 0..<count {
                guard let child = g_variant_get_child_value(variant, gsize(index)) else { continue }
                items.append(BusValue(child))
                g_variant_unref(child)
            }
            self = type.first == "a" ? .array(items) : .tuple(items)
        default: self = .other(type: type)
        }
    }

    /// More children than this are not read (fprintd lists at most ten fingers).
    package static let maxChildren = 64

    /// The tuple's fields, or nil for anything else.
    package var fields: [BusValue]? {
        if case let .tuple(items) = self { return items }
        return nil
    }

    /// A string or object path's text.
    package var text: String? {
        switch self {
        case let .string(s), let .objectPath(s): return s
        default: return nil
        }
    }

    /// An array of strings, or nil when it is anything else.
    package var strings: [String]? {
        guard case let .array(items) = self else { return nil }
        var out: [String] = []
        for item in items {
            guard case let .string(s) = item else { return nil }
            out.append(s)
        }
        return out
    }
}

/// One argument of a call, of the types FingerAuth sends.
package enum BusArgument: Equatable, Sendable {
    case string(String)
    case uint32(UInt32)
    case int32(Int32)
    /// `as`
    case strings([String])
    /// `a{sv}` with nothing in it (no hints).
    case emptyDictionary

    /// The (floating) `GVariant` of this argument.
    func variant() -> OpaquePointer? {
        switch self {
        case let .string(text): return g_variant_new_string(text)
        case let .uint32(value): return g_variant_new_uint32(value)
        case let .int32(value): return g_variant_new_int32(value)
        case let .strings(texts):
            var children: [OpaquePointer?] = texts.map { g_variant_new_string($0) }
            let type = g_variant_type_new("s")
            defer { g_variant_type_free(type) }
            return children.withUnsafeMutableBufferPointer {
                g_variant_new_array(type, $0.baseAddress, gsize($0.count))
            }
        case .emptyDictionary:
            let type = g_variant_type_new("{sv}")
            defer { g_variant_type_free(type) }
            return g_variant_new_array(type, nil, 0)
        }
    }

    /// The (floating) `GVariant` tuple of `arguments` that a call consumes.
    static func tuple(_ arguments: [BusArgument]) -> OpaquePointer? {
        var children = arguments.map { $0.variant() }
        return children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
    }
}
