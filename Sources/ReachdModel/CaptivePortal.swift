/// A captive portal announced on a verdict's link (RFC 8910), with what its API last said (RFC 8908).
public struct CaptivePortal: Hashable, Sendable {
    /// The RFC 8908 API the network announced (https only).
    public var apiURL: String
    /// The API's last answer; nil until it answered.
    public var status: CaptivePortalStatus?

    public init(apiURL: String, status: CaptivePortalStatus? = nil) {
        self.apiURL = apiURL
        self.status = status
    }

    /// The API says the client is held back (nil: it has not said).
    public var captive: Bool? { status?.captive }

    /// What the connectivity is by the API's word: `portal` while captive, `full` when it says not; nil before it answered.
    public var connectivity: Connectivity? { captive.map { $0 ? .portal : .full } }

    /// The portal of the link named `interface`: the announcement networkd recorded for it, when it names an
    /// https API, with the API's last answer. nil for no announcement, the "unrestricted" one, or one that is not https.
    public static func announced(onInterface interface: String, in snapshot: NetworkSnapshot) -> CaptivePortal? {
        guard !snapshot.networkd.isEmpty, let index = snapshot.links.values.first(where: { $0.name == interface })?.index,
              let uri = snapshot.networkd[index]?.captivePortal, case .api(let url) = CaptivePortalAnnouncement(uri: uri) else { return nil }
        return CaptivePortal(apiURL: url, status: snapshot.portalStatus[url])
    }
}
