import Foundation
import XCTest

/// The completion scripts the commands generate (and `make install` installs), each run in its own shell as a user
/// would meet it: bash with bash-completion, zsh with compinit in a pseudo-terminal (zpty, a TAB typed), fish.
/// Each must complete a verb (`reachctl st` → status) and an option's value (`reachd --bus se` → session).
final class CompletionIntegrationTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        for shell in ["/usr/bin/zsh", "/usr/bin/fish", "/usr/share/bash-completion/bash_completion"] where !FileManager.default.fileExists(atPath: shell) {
            XCTFail("\(shell) is missing: apt-get install bash-completion zsh fish (make test does)")
            throw LabError("no \(shell)")
        }
        directory = NSTemporaryDirectory() + "reachd-completions-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for command in ["reachctl", "reachd"] {
            for (shell, file) in [("bash", command), ("zsh", "_" + command), ("fish", command + ".fish")] {
                let script = try CommandLineIntegrationTests.run(NetLab.binary(command), ["--generate-completion-script", shell])
                XCTAssertEqual(script.status, 0, script.err)
                try script.out.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
            }
        }
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `shell` with `arguments` and the built commands first on PATH; its stdout.
    private func shell(_ shell: String, _ arguments: [String]) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = URL(fileURLWithPath: NetLab.binary("reachctl")).deletingLastPathComponent().path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["HOME"] = directory
        let result = try CommandLineIntegrationTests.run(shell, arguments, environment: environment)
        XCTAssertEqual(result.status, 0, "\(shell) \(arguments): \(result.err)")
        return result.out
    }

    /// bash: the words COMPREPLY holds for `line` (completing its last word), as bash-completion calls the function.
    private func bash(_ command: String, _ line: String) throws -> [String] {
        let driver = """
            source /usr/share/bash-completion/bash_completion
            source "\(directory)/\(command)"
            COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
            read -ra COMP_WORDS <<< "$COMP_LINE"
            [[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            spec=$(complete -p "\(command)"); function=${spec##*-F }; function=${function%% *}
            COMPREPLY=()
            "$function" "\(command)" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        return try shell("/bin/bash", ["-c", driver, "bash", line]).split(separator: "\n").map(String.init)
    }

    /// zsh: the command line after typing `line` and TAB in an interactive zsh (compinit, the scripts in fpath).
    private func zsh(_ line: String) throws -> String {
        let buffer = directory + "/buffer-\(UInt32.random(in: 0...UInt32.max))"
        let driver = """
            zmodload zsh/zpty
            zpty z zsh -f -i
            zpty -w z 'PS1=">"; fpath=("\(directory)" $fpath); autoload -U compinit; compinit -u -D'
            zpty -w z 'show-buffer() { print -r -- "$BUFFER" > "\(buffer)" }; zle -N show-buffer; bindkey "^X" show-buffer'
            zpty -w -n z "$1"$'\\t'$'\\x18'
            # Waits for the widget's file (a condition, not a delay): 60 s at most.
            for i in {1..600}; do [[ -s "\(buffer)" ]] && break; sleep 0.1; done
            zpty -d z
            cat "\(buffer)"
            """
        return try shell("/usr/bin/zsh", ["-f", "-c", driver, "zsh", line]).trimmingCharacters(in: .newlines)
    }

    /// fish: the candidates `complete -C` gives for `line` (the first column; the second is the help).
    private func fish(_ command: String, _ line: String) throws -> [String] {
        try shell("/usr/bin/fish", ["--no-config", "-c", "source \"\(directory)/\(command).fish\"; complete -C \"$argv[1]\"", line])
            .split(separator: "\n").map { String($0.split(separator: "\t", maxSplits: 1).first ?? "") }
    }

    func testBashCompletesAVerbAndAnOptionValue() throws {
        XCTAssertEqual(try bash("reachctl", "reachctl st"), ["status"])
        XCTAssertEqual(try bash("reachctl", "reachctl download pa"), ["pause"])
        XCTAssertEqual(try bash("reachd", "reachd --bus se"), ["session"])
        XCTAssertEqual(Set(try bash("reachd", "reachd --bus ")), ["system", "session", "none"])
        XCTAssertEqual(Set(try bash("reachd", "reachd --networkmanager-face ")), ["system", "session", "none", "auto"])
    }

    func testZshCompletesAVerbAndAnOptionValue() throws {
        XCTAssertEqual(try zsh("reachctl st"), "reachctl status ")
        XCTAssertEqual(try zsh("reachd --bus se"), "reachd --bus session ")
    }

    func testFishCompletesAVerbAndAnOptionValue() throws {
        XCTAssertEqual(try fish("reachctl", "reachctl st"), ["status"])
        XCTAssertEqual(try fish("reachd", "reachd --bus se"), ["session"])
    }

    /// `download show|pause ID`: bash asks reachctl (`---completion`), which lists the jobs of the instance the line
    /// names (before or after the verb); one job queued in the lab's system instance is what it offers.
    func testJobIDsCompleteFromTheInstance() throws {
        let lab = try TransferLab()
        defer { lab.tearDown() }
        try lab.startDaemon()
        let id = try lab.add("http://mirror.test:8/never.bin", output: lab.out + "/never.bin")
        XCTAssertEqual(try bash("reachctl", "reachctl download show --transfers-socket \(lab.socketPath) "), [id])
        XCTAssertEqual(try bash("reachctl", "reachctl --transfers-socket \(lab.socketPath) download pause \(id.prefix(3))"), [id])
        // Not fish here: its generated script asks `commandline -tC` for the cursor, which Debian 12's fish 3.6 refuses
        // outside an interactive session ("Can not set commandline in non-interactive mode"), as `complete -C` runs.
        XCTAssertEqual(try bash("reachctl", "reachctl download show --transfers-socket \(lab.lab.directory)/none.sock "), [], "no instance, no ids")
    }
}
