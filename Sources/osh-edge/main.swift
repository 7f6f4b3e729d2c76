// osh-edge — the executable the .deb ships. Its commands live in OSHEdgeCommands, which
// osh-edge-sim runs too.
import OSHEdgeCommands

runOSHEdgeCommandLine()
