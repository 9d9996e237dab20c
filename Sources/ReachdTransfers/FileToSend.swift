import NIOPosix
import ReachdSystem

/// A client's file opened for an upload: the value owns the descriptor (closed when the value goes) and knows
/// the file's size when it was opened. The upload bodies read it on `threads`, the file threads of the
/// `UserFiles` that opened it, holding the value while they do.
final class FileToSend: Sendable {
    /// The file's size when it was opened (`fstat`).
    let size: Int64
    /// The file threads its reads run on.
    let threads: FileThreads
    private let descriptor: OwnedDescriptor

    init(descriptor: consuming OwnedDescriptor, size: Int64, threads: FileThreads) {
        self.descriptor = descriptor
        self.size = size
        self.threads = threads
    }

    /// The descriptor, for the upload bodies' reads; valid while the value lives.
    var raw: Int32 { descriptor.raw }
}
