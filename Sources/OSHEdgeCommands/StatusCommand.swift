#if canImport(Glibc)
import Glibc
#endif
import OSHAgent
import OSHPlatform

/// `osh-edge status [--counters FILE | --config FILE] [--json]`: the running service, from its
/// counters file (the configured `[paths] counters_file`, else the unit's /run/osh-edge/counters).
func runStatusCommand(_ a: inout Arguments) {
    let json = a.flag("--json")
    let countersPath = a.value("--counters")
    let configPath = a.value("--config")
    a.finish()
    var path = countersPath ?? "/run/osh-edge/counters"
    if countersPath == nil {
        let config = configPath ?? Daemon.defaultConfigPath
        if configPath != nil || access(config, R_OK) == 0 {
            do {
                let loaded = try Daemon.load(configPath: config, secretsPath: nil, forRunning: false)
                guard let c = ServiceStatus.countersPath(loaded.settings) else {
                    fail("\(config) turns the counters file off (counters_file = \"\" in [paths]); status reads it", code: 1)
                }
                path = c
            } catch {
                fail("\(error)", code: 1)
            }
        }
    }
    do {
        let s = try ServiceStatus.read(path)
        print(json ? s.json(now: Clock.realtimeSeconds()) : s.text(now: Clock.realtimeSeconds()))
        exit(s.writerRuns == false ? 3 : 0)
    } catch {
        fail("\(error)", code: 3)
    }
}
