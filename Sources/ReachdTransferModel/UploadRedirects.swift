#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An upload's redirects. The request has a body, so async-http-client follows none: the upload loop asks here, and
/// follows a 307 or 308 only (method and body kept, RFC 9110 §15.4.8–9), at most 5 times, never in a loop, never
/// with credentials.
public struct UploadRedirects: Sendable {
    /// The URL the next request goes to.
    public private(set) var current: String
    /// Every URL sent to so far, the job's own first.
    private var visited: [String]

    public init(from url: String) {
        current = url
        visited = [url]
    }

    /// What the upload loop does next.
    public enum Step: Sendable {
        /// The job's attempt ends with this outcome.
        case finish(FetchOutcome)
        /// The upload is sent again, to this URL (now `current`).
        case follow(String)
    }

    /// The step after `answer` to a request sent to `current` (with credentials or not); `now`: seconds since 1970,
    /// for a Retry-After date.
    public mutating func next(after answer: UploadAnswer, withCredentials: Bool, now: Double) -> Step {
        guard !withCredentials, let target = Self.target(of: answer, from: current) else { return .finish(answer.outcome(now: now)) }
        guard visited.count <= 5, !visited.contains(target) else { return .finish(TransportFailure.redirectLimit.outcome(cancelled: false)) }
        visited.append(target)
        current = target
        return .follow(target)
    }

    /// Where a 307 or 308 answer sends an upload: an http or https URL, `Location` resolved against `url`. Other 3xx
    /// would turn the upload into a GET: they end the job with the status.
    public static func target(of answer: UploadAnswer, from url: String) -> String? {
        guard answer.status == 307 || answer.status == 308 else { return nil }
        return Redirect.target(status: answer.status, location: answer.location, from: url)
    }
}

/// Where a redirect sends a request that keeps its method (GET, HEAD).
public enum Redirect {
    /// The target of a 301, 302, 303, 307 or 308 answer to a request sent to `url`: `location` resolved against
    /// `url`, a URL a job could have (`TransferURL`: http or https, no credentials); nil for any other answer.
    public static func target(status: Int, location: String?, from url: String) -> String? {
        guard [301, 302, 303, 307, 308].contains(status), let location,
              let target = URL(string: location, relativeTo: URL(string: url))?.absoluteURL.absoluteString,
              (try? TransferURL(target)) != nil else { return nil }
        return target
    }
}
