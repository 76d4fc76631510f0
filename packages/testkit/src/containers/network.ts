import { docker, isNotFound } from '../util/docker.js';
import { khLabels, uniqueName } from './labels.js';

/** A labelled user-defined bridge network for one test run; containers find each other by alias on it. */
export class TestNetwork {
  private labels: Record<string, string> = {};
  private name?: string;

  withName(name: string): this {
    this.name = name;
    return this;
  }

  withLabels(labels: Record<string, string>): this {
    this.labels = { ...this.labels, ...labels };
    return this;
  }

  async start(): Promise<StartedTestNetwork> {
    const name = this.name ?? uniqueName('net');
    const network = await docker().createNetwork({
      Name: name,
      Driver: 'bridge',
      CheckDuplicate: true,
      Labels: khLabels('network', this.labels),
    });
    return new StartedTestNetwork(network.id, name);
  }
}

export class StartedTestNetwork {
  constructor(
    readonly id: string,
    readonly name: string,
  ) {}

  /** Removes the network; containers still attached make this fail, so stop them first. */
  async stop(): Promise<void> {
    await docker()
      .getNetwork(this.id)
      .remove()
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
}
