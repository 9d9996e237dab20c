import AsyncHTTPClient
import NIOHTTP1
import ReachdTransferModel

extension Fetcher {
    /// What a cache fetch got.
    enum CacheFetch: Sendable {
        case notModified(HTTPHeaders)
        case stored(status: Int, headers: HTTPHeaders, size: Int64)
        /// Neither 200 nor 304: the answer's status and headers (its body is not read).
        case answered(status: Int, headers: HTTPHeaders)
        case tooLarge(Int64?)
        /// No usable answer (network, TLS, a body that broke off or was refused).
        case failed(String)
    }

    /// GETs `url` into `file` for the offline cache: conditional on `cached` validators, giving up on bodies over
    /// `limit` (announced or received), and on a body shorter than its Content-Length (`CacheFill` decides).
    func fetchToFile(_ url: String, cached: Validators?, limit: Int64?, file: PartialFile, credentials: Credentials?,
                     via lease: ProxyLease, pacer: RatePacer) async -> CacheFetch {
        var request = Self.request(url)
        let conditions = CacheFill.conditionalFields(cached)
        for field in conditions { request.headers.add(name: field.name, value: field.value) }
        let response: HTTPClientResponse
        switch await send(request, credentials: credentials, allowInsecureAuth: false, via: lease) {
        case .failure(let error): return .failed(CacheFill.failure(error.outcome))
        case .success(let answer): response = answer
        }
        let status = Int(response.status.code)
        let length: Int64?
        switch CacheFill.judge(status: status, headers: response.headers, conditional: !conditions.isEmpty, limit: limit) {
        case .notModified: return .notModified(response.headers)
        case .answered: return .answered(status: status, headers: response.headers)
        case .failed(let reason): return .failed(reason)
        case .tooLarge(let announced): return .tooLarge(announced)
        case .store(let announced): length = announced
        }
        let written: Int64
        switch await receive(response.body, into: file, at: 0, limit: limit, pacer: pacer) {
        case .overLimit: return .tooLarge(nil)
        case .writeFailed(let error): return .failed("\(error)")
        case .broken(_, let error): return .failed("\(error)")
        case .cancelled: return .failed("stopped")
        case .ended(let position): written = position
        }
        if let short = CacheFill.shortBody(written: written, length: length) { return .failed(short) }
        return .stored(status: status, headers: response.headers, size: written)
    }
}
