/// A modem's 3GPP registration as ModemManager states it (`MMModem3gppRegistrationState`).
public enum ModemRegistration: UInt32, Hashable, Sendable, CaseIterable {
    case idle = 0
    case home = 1
    case searching = 2
    case denied = 3
    case unknown = 4
    case roaming = 5
    case homeSMSOnly = 6
    case roamingSMSOnly = 7
    case emergencyOnly = 8
    case homeCSFBNotPreferred = 9
    case roamingCSFBNotPreferred = 10
    case attachedRLOS = 11

    /// Registered on a visited network: `roaming`, `roaming-sms-only`, `roaming-csfb-not-preferred`.
    public var isRoaming: Bool { self == .roaming || self == .roamingSMSOnly || self == .roamingCSFBNotPreferred }
}

/// Who said that a link roams.
public enum RoamingSource: String, Hashable, Sendable, Codable, CaseIterable {
    /// ModemManager: the 3GPP registration state of the modem whose bearer carries the link.
    case modemManager = "ModemManager"
}

/// One modem as read from ModemManager's bus (a hostile peer: every value is checked here, not trusted).
public struct ModemReading: Hashable, Sendable {
    /// `Modem.Modem3gpp.RegistrationState`, raw; nil when the modem has no 3GPP interface or did not say.
    public var registration: UInt32?
    /// The `Interface` of each of the modem's bearers, as read (empty for a bearer not connected).
    public var bearerInterfaces: [String]

    public init(registration: UInt32?, bearerInterfaces: [String]) {
        self.registration = registration
        self.bearerInterfaces = bearerInterfaces
    }
}

/// Which links roam, from ModemManager's modems (pure): a link roams when a modem registered on a visited
/// network has a bearer whose `Interface` is the link's name. Bounded: at most `maximumModems` modems and
/// `maximumBearers` bearers of each are looked at (the shell reads no more); a name that cannot be an
/// interface name is ignored. Two modems claiming one link: roaming wins (the costlier reading).
public enum ModemRoaming {
    /// Modems read from one ModemManager; more are ignored (a host has one or two).
    public static let maximumModems = 16
    /// Bearers read of each modem; more are ignored (a modem has one per connected APN).
    public static let maximumBearers = 8

    /// The roaming links by name, each with its source.
    public static func roamingLinks(_ modems: [ModemReading]) -> [String: RoamingSource] {
        var links: [String: RoamingSource] = [:]
        for modem in modems.prefix(maximumModems) {
            guard let raw = modem.registration, ModemRegistration(rawValue: raw)?.isRoaming == true else { continue }
            for name in modem.bearerInterfaces.prefix(maximumBearers) where LinkInfo.isValidName(name) {
                links[name] = .modemManager
            }
        }
        return links
    }
}
