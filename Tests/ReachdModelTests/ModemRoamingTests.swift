import ReachdModel
import XCTest

/// ModemManager's modems → the roaming links: registration states, bearer interfaces, hostile values, bounds.
final class ModemRoamingTests: XCTestCase {
    func testRoamingRegistrationStates() {
        let roaming = ModemRegistration.allCases.filter(\.isRoaming).map(\.rawValue)
        XCTAssertEqual(roaming, [5, 7, 10])
        for state in ModemRegistration.allCases {
            let links = ModemRoaming.roamingLinks([ModemReading(registration: state.rawValue, bearerInterfaces: ["wwan0"])])
            XCTAssertEqual(links, state.isRoaming ? ["wwan0": .modemManager] : [:], "\(state)")
        }
    }

    func testUnknownOrMissingRegistrationDoesNotRoam() {
        XCTAssertEqual(ModemRoaming.roamingLinks([ModemReading(registration: nil, bearerInterfaces: ["wwan0"])]), [:])
        XCTAssertEqual(ModemRoaming.roamingLinks([ModemReading(registration: 12, bearerInterfaces: ["wwan0"])]), [:])
        XCTAssertEqual(ModemRoaming.roamingLinks([ModemReading(registration: .max, bearerInterfaces: ["wwan0"])]), [:])
    }

    /// Every bearer's interface of a roaming modem roams; a home modem's links do not; roaming wins a link two modems claim.
    func testBearersAndModems() {
        let links = ModemRoaming.roamingLinks([
            ModemReading(registration: 5, bearerInterfaces: ["wwan0", "", "wwan1"]),
            ModemReading(registration: 1, bearerInterfaces: ["wwan2", "wwan1"]),
        ])
        XCTAssertEqual(links, ["wwan0": .modemManager, "wwan1": .modemManager])
    }

    /// Names no link can have are ignored (a hostile ModemManager cannot plant odd keys).
    func testInvalidInterfaceNamesAreIgnored() {
        let bad = ["", ".", "..", "a/b", "a b", "eth0:1", "tab\tx", "sixteen-bytes-xx", "\u{7F}", "new\nline"]
        XCTAssertEqual(ModemRoaming.roamingLinks([ModemReading(registration: 5, bearerInterfaces: bad)]), [:])
        XCTAssertTrue(LinkInfo.isValidName("fifteen-bytes-x"))
        XCTAssertTrue(LinkInfo.isValidName("wwp0s20f0u6i12"))
    }

    /// Only the first `maximumModems` modems and `maximumBearers` bearers of each count.
    func testBounds() {
        let many = (0..<(ModemRoaming.maximumModems + 4)).map { ModemReading(registration: 5, bearerInterfaces: ["m\($0)"]) }
        XCTAssertEqual(ModemRoaming.roamingLinks(many).count, ModemRoaming.maximumModems)
        let bearers = ModemReading(registration: 5, bearerInterfaces: (0..<(ModemRoaming.maximumBearers + 4)).map { "b\($0)" })
        XCTAssertEqual(ModemRoaming.roamingLinks([bearers]).count, ModemRoaming.maximumBearers)
    }
}
