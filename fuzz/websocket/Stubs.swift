// The one type the WebSocket sources use from Requests.swift, which would drag in most of OSHCore.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}
