import ReachdModel
import ReachdTransferModel
import XCTest

/// Rate caps: how they are written, and the bucket that paces a transfer to one.
final class TokenBucketTests: XCTestCase {
    func testRatesAsWgetWritesThem() {
        XCTAssertEqual(ByteRate.bytesPerSecond("500k"), 512_000)
        XCTAssertEqual(ByteRate.bytesPerSecond("2M"), 2 << 20)
        XCTAssertEqual(ByteRate.bytesPerSecond("1.5m"), 1_572_864)
        XCTAssertEqual(ByteRate.bytesPerSecond("1g"), 1 << 30)
        XCTAssertEqual(ByteRate.bytesPerSecond("4096"), 4096)
        for refused in ["", "k", "1023", "-5k", "2T", "1e6", "nan", "inf", "2 M", "1025g", "0x10k", "..k"] {
            XCTAssertNil(ByteRate.bytesPerSecond(refused), refused)
        }
        XCTAssertEqual(ByteRate.describe(512_000), "500 KiB/s")
        XCTAssertEqual(ByteRate.describe(1_572_864), "1.5 MiB/s")
        XCTAssertEqual(ByteRate.describe(100), "100 B/s")
    }

    func testTheBucketPacesToItsRateWithAQuarterSecondBurst() {
        var bucket = TokenBucket(rate: 100_000, now: 0)
        // Nothing saved up at the start: 50 kB owe half a second.
        XCTAssertEqual(bucket.take(50_000, now: 0), 0.5, accuracy: 1e-9)
        // Paid back by 0.5 s; at 0.6 s, 10 kB are in hand.
        XCTAssertEqual(bucket.take(10_000, now: 0.6), 0, accuracy: 1e-9)
        // A long pause saves up a quarter of a second's worth at most.
        XCTAssertEqual(bucket.take(25_000, now: 100), 0, accuracy: 1e-9)
        XCTAssertEqual(bucket.take(10_000, now: 100), 0.1, accuracy: 1e-9)
        // Moving 1 MB in pieces at the pace the bucket sets takes 10 s.
        var now = 200.0, moved = 0
        bucket = TokenBucket(rate: 100_000, now: now)
        while moved < 1_000_000 {
            now += bucket.take(16_384, now: now)
            moved += 16_384
        }
        XCTAssertEqual(now - 200, Double(moved) / 100_000, accuracy: 0.01)
    }

    func testANewRateCountsFromItsChange() {
        var bucket = TokenBucket(rate: 10_000, now: 0)
        XCTAssertEqual(bucket.take(10_000, now: 0), 1, accuracy: 1e-9)
        bucket.setRate(100_000, now: 0)
        // What was owed is owed at the new rate.
        XCTAssertEqual(bucket.take(0, now: 0), 0.1, accuracy: 1e-9)
        XCTAssertEqual(bucket.rate, 100_000)
        XCTAssertEqual(TokenBucket.rates, 1024...(1 << 40))
    }
}
