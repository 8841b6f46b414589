// The typed hand-offs between the controller's stages (controller.ts connects them). A stage
// takes its input as one of these and never holds the next stage itself, so each can be
// built and tested alone and the wiring says, in one place, what flows where.
//
// - Sink<T>: a stage's input of values (the reconciler's StatusReport to the status writer
//   and the deploy stage).
// - Topic<T>: one stage's output, the input of several.
// - Signal: "what you read changed: read it again", without a value. Several sources raise
//   it (pods of a proxy, a proxy's ACK or NACK, a name conflict); the stage listening reads
//   what it needs itself. Raising is synchronous and cheap: listeners only mark work.

export interface Sink<T> {
  submit(value: T): void;
}

export class Topic<T> implements Sink<T> {
  readonly #sinks: Sink<T>[] = [];

  constructor(...sinks: Sink<T>[]) {
    this.#sinks.push(...sinks);
  }

  submit(value: T): void {
    for (const s of this.#sinks) s.submit(value);
  }
}

export class Signal {
  readonly #listeners: (() => void)[] = [];

  /** Bound: handed out as a callback to the sources. */
  readonly raise = (): void => {
    for (const l of this.#listeners) l();
  };

  listen(listener: () => void): void {
    this.#listeners.push(listener);
  }
}
