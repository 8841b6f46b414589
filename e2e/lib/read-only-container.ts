// A testcontainers GenericContainer whose root filesystem is read-only, as the chart and the
// deployer run the project's images (testcontainers has no option for it). Every container is
// labelled with this test process's run, so a suite can remove what a failed start left behind
// (the testcontainers reaper, which would do it, cannot run here).
import { GenericContainer } from 'testcontainers';

export const RUN_LABEL = 'dev.tollgate.test-run';
export const RUN_ID = `${process.pid}-${Date.now()}`;

export class ReadOnlyContainer extends GenericContainer {
  constructor(image: string) {
    super(image);
    this.hostConfig.ReadonlyRootfs = true;
    this.withLabels({ [RUN_LABEL]: RUN_ID });
  }
}
