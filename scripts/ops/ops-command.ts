import { spawnSync } from 'node:child_process';
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { S3LandingStore } from '../../lambda/landing/s3-landing-store.js';
import { type CommandOutput, defineCommand, parseCommandLine, stderrLogger, UsageError } from '../cli/command-line.js';
import { stackOutputs, stackResources, withoutHash } from '../cli/stack.js';
import { replayRange } from '../replay/replay-range.js';
import { listFailures, purgeQueue, replayFailures } from './failure-queue.js';
import { cdkDestroyArgs, describePlan, teardownPlan } from './teardown.js';
import { DESTROY_USAGE, OPS_USAGE } from './usage.js';

/** The queues an operator empties, by the name the commands take, and the stack output that holds each URL. */
const QUEUES = { failure: 'FailureQueueUrl', 'compaction-dead-letters': 'CompactionDeadLetterQueueUrl' } as const;

const OPTIONS = {
  stack: { type: 'string' },
  region: { type: 'string' },
  name: { type: 'string' },
  queue: { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  yes: { type: 'boolean', default: false },
} as const;

/** The commands, checked before anything else (the stack, the region, credentials). */
const COMMANDS = ['resources', 'failures list', 'failures replay', 'queue purge', 'destroy'] as const;

/** `destroy` has a usage of its own (`npm run destroy -- --help`); every other command shares the ops usage. */
const usageOf = (argv: readonly string[]) => (argv[0] === 'destroy' ? DESTROY_USAGE : OPS_USAGE);

const printer = (out: CommandOutput) => (value: unknown): 0 => {
  out.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n`);
  return 0;
};

/**
 * `npm run ops` and `npm run destroy` (`ops destroy`): the command is checked before the stack, the region or
 * credentials are looked at.
 */
export const opsCommand = defineCommand((argv) => ({ name: argv[0] === 'destroy' ? 'destroy' : 'ops', usage: usageOf(argv) }), async (argv, out) => {
  const parsed = parseCommandLine(argv, OPTIONS, usageOf(argv), out, true);
  if (!parsed) return 0;
  const print = printer(out);
  const { values, positionals } = parsed;
  const command = positionals.join(' ');
  const stack = values.stack;
  if (command === '') throw new UsageError('no command given');
  if (!(COMMANDS as readonly string[]).includes(command)) throw new UsageError(`unknown command '${command}'`);
  if (!stack) throw new UsageError(`'${command}' needs --stack`);
  const region = values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  if (!region) throw new UsageError('no region: give --region or set AWS_REGION');
  const cloudformation = new CloudFormationClient({ region });
  const sqs = new SQSClient({ region });
  const queueUrl = async (output: string) => {
    const url = (await stackOutputs(cloudformation, stack))[output];
    if (!url) throw new Error(`stack ${stack} in ${region} has no output ${output}`);
    return url;
  };
  try {
    switch (command) {
      case 'resources': {
        const resources = await stackResources(cloudformation, stack);
        if (values.name === undefined) return print(Object.fromEntries(resources.map((r) => [withoutHash(r.logicalId), r.physicalId])));
        const found = resources.find((r) => withoutHash(r.logicalId) === values.name || r.logicalId === values.name);
        if (!found) throw new UsageError(`stack ${stack} has no resource named ${values.name}; 'resources' without --name lists them`);
        return print(found.physicalId);
      }
      case 'failures list':
        return print(await listFailures(sqs, await queueUrl(QUEUES.failure)));
      case 'failures replay': {
        const outputs = await stackOutputs(cloudformation, stack);
        const kinesis = new KinesisClient({ region });
        const s3 = new S3Client({ region });
        try {
          const store = new S3LandingStore(s3, outputs.DataBucketName ?? '');
          const logger = stderrLogger(out);
          const replay = async (range: Parameters<typeof replayRange>[1]) => ({ records: (await replayRange({ kinesis, store, logger }, range)).recordsIn });
          const outcomes = await replayFailures({ sqs, queueUrl: await queueUrl(QUEUES.failure), replay }, { dryRun: values['dry-run'] });
          print(outcomes);
          return outcomes.some((o) => o.outcome === 'failed') ? 1 : 0;
        } finally {
          kinesis.destroy();
          s3.destroy();
        }
      }
      case 'queue purge': {
        const queue = values.queue as keyof typeof QUEUES | undefined;
        if (!queue || !(queue in QUEUES)) throw new UsageError(`queue purge needs --queue ${Object.keys(QUEUES).join('|')}`);
        if (!values.yes) throw new UsageError(`queue purge deletes every message of the ${queue} queue: add --yes once you are sure none is still needed`);
        await purgeQueue(sqs, await queueUrl(QUEUES[queue]));
        return print({ purged: queue });
      }
      case 'destroy': {
        const plan = await teardownPlan(cloudformation, stack);
        print(describePlan(plan));
        if (!values.yes) return print(`\nNothing deleted. To delete the stack (the kept resources stay): npm run destroy -- --stack ${stack} --region ${region} --yes`);
        const cdk = spawnSync('npx', cdkDestroyArgs(stack, await stackOutputs(cloudformation, stack)), { stdio: 'inherit', env: { ...process.env, AWS_REGION: region } });
        if (cdk.status !== 0) throw new Error(`cdk destroy exited with ${cdk.status ?? cdk.signal}`);
        return print(`\nStack ${stack} deleted. Kept, with the command that deletes each, above.`);
      }
      default:
        throw new UsageError(`unknown command '${command}'`);
    }
  } finally {
    cloudformation.destroy();
    sqs.destroy();
  }
});
