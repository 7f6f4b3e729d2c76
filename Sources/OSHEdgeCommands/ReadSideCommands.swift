// osh-edge systems | datastreams | schema --remote | observations | command: parsing and printing.
#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHCore
import OSHPlatform

/// `--node URL [--user NAME] [--insecure-trust-cert PEM | --pin-sha256 B64]`, as the read-side
/// commands and `check` take them.
struct NodeArguments {
    let url: String?
    let user: String
    let tls: TLSPolicy

    init(_ a: inout Arguments) {
        url = a.value("--node")
        user = a.value("--user") ?? ""
        var tls = TLSPolicy.verify
        if let pem = a.value("--insecure-trust-cert") { tls = .trustCertificate(pemPath: pem) }
        if let pin = a.value("--pin-sha256") { tls = .pinnedKey(sha256Base64: pin) }
        self.tls = tls
    }

    /// The node at `url` (`--node`'s), with `--user`'s password asked for, never an argument.
    func server(_ url: String) -> NodeEndpoint {
        let password = user.isEmpty ? "" : password(for: user)
        return NodeEndpoint(apiRoot: url, credentials: user.isEmpty ? .none : .basic(username: user, password: password), tls: tls)
    }
}

/// The node `--node` names (`NodeArguments`), else the configured node (`--config FILE`,
/// `--secrets FILE`). The password is never an argument (see `password(for:)`).
func readSideNode(_ a: inout Arguments) -> NodeReader {
    let node = NodeArguments(&a)
    let config = a.value("--config")
    let secrets = a.value("--secrets")
    do {
        let server: NodeEndpoint
        if let url = node.url {
            server = node.server(url)
        } else {
            server = try ReadSide.configuredServer(configPath: config ?? Daemon.defaultConfigPath, secretsPath: secrets)
        }
        return try NodeReader(server: server)
    } catch {
        fail("\(error)", code: 1)
    }
}

/// The system whose outputs a datastream may be named by: `--system SYSTEM`, else the UID of the
/// board the `--config` file describes (read without consuming it: readSideNode takes it next).
func boardSystem(_ a: inout Arguments) -> String? {
    if let s = a.value("--system") { return s }
    guard let i = a.rest.firstIndex(of: "--config"), i + 1 < a.rest.count else { return nil }
    return (try? Daemon.load(configPath: a.rest[i + 1], secretsPath: nil, forRunning: false))?.config.identity.uid
}

func wallSeconds() -> Double { Clock.realtimeSeconds() }

func readSideRun(_ body: () throws -> String) -> Never {
    do {
        print(try body())
        exit(0)
    } catch {
        fail("\(error)", code: 1)
    }
}

func runSystemsCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let limitText = a.value("--limit") ?? "100"
    guard let limit = Int(limitText), limit > 0 else { fail("--limit must be a positive integer, not '\(limitText)'") }
    let node = readSideNode(&a)
    a.finish()
    readSideRun {
        let now = wallSeconds()
        let rows = try ReadSide.systems(node, limit: limit, now: now)
        return json ? ReadSideRender.systemsJSON(rows, now: now) : ReadSideRender.systemsTable(rows, now: now)
    }
}

func runDatastreamsCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let node = readSideNode(&a)
    guard let system = a.positional() else { fail("datastreams needs a SYSTEM: its id or UID (see osh-edge systems)") }
    a.finish()
    readSideRun {
        let now = wallSeconds()
        let (s, rows) = try ReadSide.datastreams(node, system: system, now: now)
        return json ? ReadSideRender.datastreamsJSON(s, rows) : ReadSideRender.datastreamsTable(s, rows, now: now)
    }
}

func runControlStreamsCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let node = readSideNode(&a)
    guard let system = a.positional() else { fail("controlstreams needs a SYSTEM: its id or UID (see osh-edge systems)") }
    a.finish()
    readSideRun {
        let (s, rows) = try ReadSide.controlStreams(node, system: system)
        return json ? ReadSideRender.controlStreamsJSON(s, rows) : ReadSideRender.controlStreamsTable(s, rows)
    }
}

func readSideFormat(_ a: inout Arguments) -> String? {
    guard let f = a.value("--format") else { return nil }
    guard let m = ReadSide.mediaType(f) else { fail("--format must be om+json, swe+json or swe+binary, not '\(f)'") }
    return m
}

/// `schema --remote DATASTREAM [--format F] [--json]` (called from `schema` when `--remote` is given).
func runRemoteSchemaCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let format = readSideFormat(&a)
    let node = readSideNode(&a)
    guard let ds = a.positional() else { fail("schema --remote needs a DATASTREAM id (see osh-edge datastreams SYSTEM)") }
    a.finish()
    readSideRun {
        let s = try ReadSide.schema(node, datastream: ds, format: format)
        return json ? ReadSideRender.schemaJSON(s) : ReadSideRender.schemaTable(s)
    }
}

func runObservationsCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let current = a.flag("--current")
    let format = readSideFormat(&a)
    let latestText = a.value("--latest") ?? "10"
    guard let latest = Int(latestText), (1...10_000).contains(latest) else {
        fail("--latest must be an integer from 1 to 10000, not '\(latestText)'")
    }
    let system = boardSystem(&a)
    let node = readSideNode(&a)
    guard let ref = a.positional() else {
        fail("observations needs a DATASTREAM: its id, or its output name with --system SYSTEM or --config FILE")
    }
    a.finish()
    readSideRun {
        let ds = try ReadSide.resolveDatastream(node, ref, system: system)
        let page = try ReadSide.observations(node, datastream: ds, query: current ? .latestResultTime : .newest(latest), format: format)
        return json ? ReadSideRender.observationsJSON(page) : ReadSideRender.observationsTable(page)
    }
}

func runCommandCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let waitText = a.value("--wait")
    let node = readSideNode(&a)
    guard let wait = Double(waitText ?? "12"), wait >= 0 else {
        fail("--wait takes seconds (how long to wait for the command's outcome), e.g. --wait 30")
    }
    guard let cs = a.positional() else {
        fail("command needs a CONTROLSTREAM id and the parameters, e.g. osh-edge command ID '{\"rpan\":3.0}'")
    }
    guard let body = a.positional() else { fail("command needs the parameters as JSON, e.g. '{\"rpan\":3.0}'") }
    a.finish()
    do {
        let o = try ReadSide.command(node, controlStream: cs, json: body, wait: wait)
        print(json ? ReadSideRender.commandJSON(o) : ReadSideRender.commandText(o))
        // For scripts: 1 when the board did not carry it out (nobody listening, or REJECTED/FAILED/CANCELED).
        let refused = o.commandID == nil || ["REJECTED", "FAILED", "CANCELED"].contains(o.status ?? "")
        exit(refused ? 1 : 0)
    } catch {
        fail("\(error)", code: 1)
    }
}
