@testable import ReachdDaemon
import XCTest

/// `--networkmanager-face auto`: the face serves only where systemd says NetworkManager does not start by itself.
final class NetworkManagerFaceModeTests: XCTestCase {
    func testAutoServesOnlyWhereNetworkManagerIsNotInstalledDisabledOrMasked() {
        let table: [(NetworkManagerUnitFile, Bool)] = [
            (.notFound, true),
            (.state("disabled"), true),
            (.state("masked"), true),
            (.state("masked-runtime"), true),
            (.state("enabled"), false),
            (.state("enabled-runtime"), false),
            (.state("static"), false),
            (.state("indirect"), false),
            (.state("alias"), false),
            (.state("linked"), false),
            (.state("linked-runtime"), false),
            (.state("generated"), false),
            (.state("transient"), false),
            (.state("bad"), false),
            (.state("a-state-of-a-later-systemd"), false),
            (.state(""), false),
            (.unknown("org.freedesktop.DBus.Error.ServiceUnknown: no systemd"), false),
        ]
        for (unit, serves) in table {
            XCTAssertEqual(NetworkManagerFaceMode.autoServes(unit), serves, "\(unit)")
        }
    }
}
