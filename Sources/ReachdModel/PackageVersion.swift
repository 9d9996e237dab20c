/// The package's version: what `--version` prints and, read by the Makefile (`VERSION`), the Debian
/// package's version. The one place it is written.
public enum PackageVersion {
    public static let current = "0.1.0"
}
