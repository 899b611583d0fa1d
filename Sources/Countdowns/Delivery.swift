/// An event a ``CountdownCenter`` has collected under its lock and delivers
/// after releasing it: the handler with its event, stored inline, so that
/// collecting a thousand ticks allocates nothing; and the key of the
/// observation it is for (0: the center's end handler), so that one ended
/// meanwhile hears nothing.
enum Delivery {
    case end(@Sendable (CountdownEnd) -> Void, CountdownEnd)
    case countdown(UInt64, @Sendable (CountdownEvent) -> Void, CountdownEvent)
    case group(UInt64, @Sendable (GroupEvent) -> Void, GroupEvent)
    case all(UInt64, @Sendable (CenterTick) -> Void, CenterTick)

    /// The observation it is for; 0 for the center's end handler.
    var observation: UInt64 {
        switch self {
        case .end: 0
        case .countdown(let key, _, _), .group(let key, _, _), .all(let key, _, _): key
        }
    }

    /// Calls the handler.
    func deliver() {
        switch self {
        case .end(let handler, let event): handler(event)
        case .countdown(_, let handler, let event): handler(event)
        case .group(_, let handler, let event): handler(event)
        case .all(_, let handler, let event): handler(event)
        }
    }
}
