import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { DEFAULT_CONFIG, DEFAULT_STACK_NAME } from '../../lib/config.js';
import { TraceCatalog } from '../../lib/constructs/trace-catalog.js';
import { synthStack } from './support/synth-stack.js';

/**
 * The Glue database and the Athena workgroup are named after the stack, and those names are the account's and
 * region's: two stacks whose names give the same one collide, and the second create fails. DatabaseName and the
 * workgroup's Name force replacement, so a deployed stack keeps the ones it has.
 */
describe('the catalog\'s names', () => {
  const namesOf = (stackName: string, keptDatabaseName?: string) => {
    const stack = new Stack(new App(), stackName);
    new TraceCatalog(stack, 'Catalog', { bucket: new Bucket(stack, 'Bucket'), resultsPrefix: 'athena-results/', ...(keptDatabaseName === undefined ? {} : { keptDatabaseName }) });
    const template = Template.fromStack(stack);
    const [database] = Object.values(template.findResources('AWS::Glue::Database')) as { Properties: { DatabaseInput: { Name: string } } }[];
    const [workGroup] = Object.values(template.findResources('AWS::Athena::WorkGroup')) as { Properties: { Name: string } }[];
    return { database: database?.Properties.DatabaseInput.Name, workGroup: workGroup?.Properties.Name };
  };

  it('are what they were for the default stack name', () => {
    expect(DEFAULT_STACK_NAME).toBe('TraceIngest');
    expect(namesOf(DEFAULT_STACK_NAME)).toEqual({ database: 'trace_ingest_traceingest', workGroup: 'trace-ingest-traceingest' });
  });

  it('are what they were for a name whose Glue form loses nothing (lower case, digits, single hyphens)', () => {
    expect(namesOf('trace-ingest-dev2')).toEqual({ database: 'trace_ingest_trace_ingest_dev2', workGroup: 'trace-ingest-trace-ingest-dev2' });
    expect(namesOf('t')).toEqual({ database: 'trace_ingest_t', workGroup: 'trace-ingest-t' });
  });

  it.each([
    ['Trace-Ingest', /letter case/, /e\.g\. 'trace-ingest'/],
    ['TraceIngestDev', /letter case/, /e\.g\. 'traceingestdev'/],
    ['trace--ingest', /a run of hyphens/, /e\.g\. 'trace-ingest'/],
    ['traceingest', /the default stack's \(TraceIngest\)/, /lower-case letters/],
  ])('refuses %s at synth, saying what collides, how to name a new stack, and how a deployed one keeps its database', (stackName, why, advice) => {
    let message = '';
    try {
      namesOf(stackName);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(why);
    expect(message).toMatch(advice);
    const today = `trace_ingest_${stackName.toLowerCase().replace(/[^a-z0-9]+/g, '_')}`;
    expect(message).toContain(`-c glueDatabaseName=${today}`);
  });

  it('keeps a deployed stack\'s database (and workgroup) when its name is pinned, and refuses a pin that would rename it', () => {
    expect(namesOf('Trace-Ingest', 'trace_ingest_trace_ingest')).toEqual({ database: 'trace_ingest_trace_ingest', workGroup: 'trace-ingest-trace-ingest' });
    expect(() => namesOf('Trace-Ingest', 'trace_ingest_trace_ingest_2')).toThrow(/is not the database of stack 'Trace-Ingest', trace_ingest_trace_ingest: another name would be another database/);
  });

  it('takes the pin from the stack\'s configuration (context glueDatabaseName)', () => {
    const { stack } = synthStack({ stackName: 'TraceIngestDev', config: { ...DEFAULT_CONFIG, glueDatabaseName: 'trace_ingest_traceingestdev' } });
    expect(stack.landing.catalog.databaseName).toBe('trace_ingest_traceingestdev');
  });
});
