// The floor of bench/memory: a static Swift program that prints nothing and waits for SIGTERM, so that its
// resident memory is what the Swift runtime alone costs.
#if canImport(Glibc)
import Glibc
#endif

while true { pause() }
