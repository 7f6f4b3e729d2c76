import OSHSimulatedSources

/// The simulation provider moved to OSHSimulatedSources (osh-edge-sim links it without the node);
/// the demo, osh-edge-dev and the tests keep naming it through OSHDevTools.
public typealias DemoSimulation = OSHSimulatedSources.DemoSimulation
