// The controller is a set of runnables started and stopped together. A runnable that needs
// leadership (it writes to the API server: status, later the deployer) runs only while this
// replica holds the Lease; the others (watch, translate, servers, later the snapshot server)
// run on every replica.
export interface Runnable {
  readonly name: string;
  /** True: started when this replica becomes leader, stopped at once when it is not. */
  readonly needsLeader: boolean;
  /** Resolves once the runnable is serving (a server bound, a watch started). */
  start(): Promise<void>;
  /** Stops and releases everything; resolves when done. Called once per start. */
  stop(): Promise<void>;
}
