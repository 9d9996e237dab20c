/// A host as one requester watches or asked about it: each requester's are judged, recorded and published apart.
struct HostKey: Hashable, Sendable {
    let host: String
    let requester: ResolutionRequester

    init(_ host: String, _ requester: ResolutionRequester) {
        self.host = host
        self.requester = requester
    }
}
