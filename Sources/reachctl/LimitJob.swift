import ArgumentParser
import ReachdClient
import ReachdModel
import ReachdTransferModel
import ReachdTransferProtocol

/// `--max-rate` of download add and upload add.
struct RateOption: ParsableArguments {
    @Option(help: "Cap this job at RATE bytes per second (500k, 2M, 1.5M: binary multiples, as wget's --limit-rate), beside the instance's caps; `download limit` changes it.")
    var maxRate: String?

    func validate() throws {
        if let maxRate, ByteRate.bytesPerSecond(maxRate) == nil { throw ValidationError(RateOption.refusal("--max-rate")) }
    }

    var bytesPerSecond: Int64? { maxRate.flatMap(ByteRate.bytesPerSecond) }

    static func refusal(_ name: String) -> String {
        "\(name) must be bytes per second from 1k to 1024g, like 500k, 2M or 1.5M"
    }
}

/// limit: sets a job's own cap, also while it runs.
struct LimitJob<Group: JobGroup>: ParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "limit",
            abstract: "Cap a job at RATE bytes per second (none: no cap of its own), also while it runs.",
            discussion: "The instance's caps ([downloads] max_rate, metered_max_rate) still apply.\n\n"
                + examples("reachctl \(Group.name) limit 3f2a9c01d4e8b7a6 500k", "reachctl \(Group.name) limit 3f2a9c01d4e8b7a6 none")
        )
    }

    @OptionGroup var job: JobArguments
    @Argument(help: "Bytes per second (500k, 2M, 1.5M), or none.") var rate: String

    func validate() throws {
        guard rate == "none" || ByteRate.bytesPerSecond(rate) != nil else { throw ValidationError(RateOption.refusal("RATE") + ", or none") }
    }

    func run() throws {
        let client = job.transfers.connect()
        var request = TransferRequest(op: .limit, job: job.id)
        request.maxRate = ByteRate.bytesPerSecond(rate)
        let answer = transferCall { () throws(ClientError) in try client.job(request) }
        printLine(job.output.json ? answer.json : humanLine(answer))
    }
}
