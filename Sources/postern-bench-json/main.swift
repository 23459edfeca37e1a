// postern-bench-json: times the translation of one canned Directus list answer into the client body
// (`make bench-json`), two ways in the same run: the single-pass `JSONTranscoder` the gateway uses, and Foundation's
// `JSONDecoder` + `JSONEncoder` over Codable structs doing the same mapping.
//
// Usage: postern-bench-json [--max-us N] [--only-transcoder] [--iterations N] [answer.json] [config.json] [resource]
//        (defaults: 10 µs, both, bench/posts-20.json, config/postern.json, books)
// With --iterations N it only runs the transcoder N times, untimed, and exits: for counting what one
// translation costs with outside tools (e.g. mallocs: a uprobe on malloc, runs of N and 0 compared).
// Prints µs per translation (the median of several batches) and exits 1 when the transcoder is above
// the limit, or when the two outputs do not decode to the same values. Options come from the command
// line only (the Makefile passes `BENCH_JSON_MAX_US`): only the config module reads the environment.
import Foundation
import PosternCore
import PosternHTTP

var limitMicroseconds = 10.0
var only = false
var iterations: Int?
var positional: [String] = []
var argumentIterator = CommandLine.arguments.dropFirst().makeIterator()
while let argument = argumentIterator.next() {
    switch argument {
    case "--max-us":
        guard let value = argumentIterator.next().flatMap(Double.init) else {
            FileHandle.standardError.write(Data("bench-json: --max-us needs a number\n".utf8))
            exit(2)
        }
        limitMicroseconds = value
    case "--only-transcoder":
        only = true
    case "--iterations":
        guard let value = argumentIterator.next().flatMap(Int.init), value >= 0 else {
            FileHandle.standardError.write(Data("bench-json: --iterations needs a count\n".utf8))
            exit(2)
        }
        iterations = value
    default:
        positional.append(argument)
    }
}
let answerPath = positional.count > 0 ? positional[0] : "bench/posts-20.json"
let configPath = positional.count > 1 ? positional[1] : "config/postern.json"
let resourceName = positional.count > 2 ? positional[2] : "books"

/// Prints to stderr and exits 2 (a setup problem, not a slow result).
func die(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-json: \(message)\n".utf8))
    exit(2)
}

guard let answer = FileManager.default.contents(atPath: answerPath) else { die("cannot read \(answerPath)") }
let config: PosternConfig
switch PosternConfig.load(configPath: configPath, environment: [:]) {
case .success(let loaded): config = loaded
case .failure(let error): die("\(configPath): \(error)")
}
guard let resource = config.resources.first(where: { $0.name == resourceName }) else {
    die("no resource \(resourceName) in \(configPath)")
}
guard resource.fields.map(\.0) == ["id", "title", "subtitle", "user"],
      resource.fields.map(\.1) == ["id", "title", "content", "user_created"], resource.required == ["title"] else {
    die("the Codable baseline is written for the shipped books resource (id, title←title, subtitle←content, user←user_created)")
}

// MARK: - The Foundation baseline: Codable structs doing the books mapping

/// `{"data":[…],"meta":{"filter_count":N}}`.
struct DirectusList: Decodable {
    /// The items.
    let data: [DirectusPost]
    /// The counts.
    let meta: Meta?
}

/// `meta`.
struct Meta: Decodable {
    /// Items matching the filter.
    let filter_count: Int64?
}

/// One Directus post (unmapped fields are ignored by the decoder).
struct DirectusPost: Decodable {
    /// The key.
    let id: Int64
    /// Required in the resource.
    let title: String?
    /// → `subtitle`.
    let content: String?
    /// → `user`.
    let user_created: String?
}

/// `{"books":[…],"total":N}`.
struct BookList: Encodable {
    /// The items.
    let books: [Book]
    /// `meta.filter_count`, else the item count.
    let total: Int64
}

/// One book as clients see it.
struct Book: Encodable {
    /// The key as a string.
    let id: String
    /// Never null.
    let title: String
    /// Omitted when null.
    let subtitle: String?
    /// Omitted when null.
    let user: String?
}

/// The Codable translation.
func foundationTranslate(_ body: Data, decoder: JSONDecoder, encoder: JSONEncoder) throws -> Data {
    let list = try decoder.decode(DirectusList.self, from: body)
    let books = list.data.map {
        Book(id: String($0.id), title: $0.title ?? "", subtitle: $0.content, user: $0.user_created)
    }
    return try encoder.encode(BookList(books: books, total: list.meta?.filter_count ?? Int64(books.count)))
}

// MARK: - Timing

/// Nanoseconds on `clock`.
func nanoseconds(_ clock: clockid_t) -> UInt64 {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// CPU nanoseconds of this thread: time spent waiting for a core on a busy machine is not counted.
func now() -> UInt64 { nanoseconds(CLOCK_THREAD_CPUTIME_ID) }

/// The median over `batches` batches of µs per call of `body`, each batch sized to last about 20 ms.
/// Also returns the median wall-clock µs (which includes waiting for a core when the machine is busy).
func measure(batches: Int = 15, _ body: () -> Int) -> (median: Double, best: Double, wall: Double) {
    var sink = 0
    // Warm up, and size a batch.
    var perBatch = 1
    while true {
        let start = now()
        for _ in 0..<perBatch { sink &+= body() }
        let elapsed = now() - start
        if elapsed > 20_000_000 || perBatch >= 1 << 20 { break }
        perBatch *= 2
    }
    var samples: [Double] = []
    var walls: [Double] = []
    for _ in 0..<batches {
        let start = now()
        let wallStart = nanoseconds(CLOCK_MONOTONIC)
        for _ in 0..<perBatch { sink &+= body() }
        samples.append(Double(now() - start) / Double(perBatch) / 1000)
        walls.append(Double(nanoseconds(CLOCK_MONOTONIC) - wallStart) / Double(perBatch) / 1000)
    }
    if sink == 42 { print("") } // keeps the work observable
    samples.sort()
    walls.sort()
    return (samples[samples.count / 2], samples[0], walls[walls.count / 2])
}

let transcoder = JSONTranscoder(resource)
// As the gateway hands it the answer (its own body type: no `Data` made for the output).
let answerBody = HTTPBody.data(answer)
let decoder = JSONDecoder()
let encoder = JSONEncoder()

// The two outputs must decode to the same values before any of them is timed.
let outputs: [(String, Data)]
do {
    outputs = [("transcoder", try transcoder.renderList(directusBody: answer)),
               ("Foundation Codable", try foundationTranslate(answer, decoder: decoder, encoder: encoder))]
} catch {
    die("translation failed: \(error)")
}
// Each output decoded and written again with sorted keys: equal values give equal bytes. (An `NSDictionary`
// compare is false on Linux even for one output against itself: its values are bridged Swift arrays.)
let decoded = outputs.map { output in
    (try? JSONSerialization.jsonObject(with: output.1)).flatMap {
        try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys])
    }
}
for (i, (name, _)) in outputs.enumerated() where decoded[i] == nil || decoded[i] != decoded[0] {
    die("\(name)'s output does not decode to the transcoder's values")
}

if let iterations {
    var sink = 0
    for _ in 0..<iterations { sink &+= (try? transcoder.renderList(directusBody: answerBody))?.count ?? 0 }
    print("bench-json: \(iterations) translations, \(sink) bytes")
    exit(0)
}

print("bench-json: \(answerPath) (\(answer.count) bytes) → \(resourceName) (\(outputs[0].1.count) bytes), "
      + "median of 15 batches, µs of CPU per translation")
let results: [(String, (median: Double, best: Double, wall: Double))] = only ? [
    ("JSONTranscoder", measure { (try? transcoder.renderList(directusBody: answerBody))?.count ?? 0 }),
] : [
    ("JSONTranscoder", measure { (try? transcoder.renderList(directusBody: answerBody))?.count ?? 0 }),
    ("JSONDecoder+JSONEncoder", measure {
        (try? foundationTranslate(answer, decoder: decoder, encoder: encoder))?.count ?? 0
    }),
]
for (name, result) in results {
    let ratio = result.median / results[0].1.median
    let label = name.padding(toLength: 24, withPad: " ", startingAt: 0)
    print(label + String(format: " %8.2f µs  (best %.2f, wall-clock median %.2f)  %6.1f×",
                         result.median, result.best, result.wall, ratio))
}
let transcoderMedian = results[0].1.median
let mbps = Double(answer.count) / transcoderMedian
print(String(format: "  transcoder throughput: %.0f MB/s of Directus JSON", mbps))
if transcoderMedian > limitMicroseconds {
    print(String(format: "bench-json: FAIL: the transcoder takes %.2f µs, above the %.1f µs target", transcoderMedian, limitMicroseconds))
    exit(1)
}
print(String(format: "bench-json: OK: the transcoder takes %.2f µs (target ≤ %.1f µs)", transcoderMedian, limitMicroseconds))
