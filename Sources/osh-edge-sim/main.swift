// osh-edge-sim — the shipped agent plus the simulated sources, no development node: what
// benchmarks and soak runs use (`source = "simulated"` without libmicrohttpd's GnuTLS and
// friends in the address space). Not in the .deb.
import OSHEdgeCommands
import OSHSimulation

// Before any agent runs, as in osh-edge-dev.
DemoSimulation.install()
runOSHEdgeCommandLine()
