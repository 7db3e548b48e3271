import { UsageError } from '../../../scripts/cli/command-line.js';
import { localPorts } from '../../../scripts/local/ports.js';

describe("npm start's ports", () => {
  it('defaults the API to 3000 and every engine to a free port (0)', () => {
    expect(localPorts({}, {})).toEqual({ api: 3000, engines: { dynamodb: 0, kinesis: 0, s3: 0 } });
  });

  it('takes each engine port from its variable, and the flag over the variable', () => {
    const env = { PORT: '8080', DYNAMODB_PORT: '8000', KINESIS_PORT: '4567', S3_PORT: '4568' };
    expect(localPorts({}, env)).toEqual({ api: 8080, engines: { dynamodb: 8000, kinesis: 4567, s3: 4568 } });
    expect(localPorts({ 'dynamodb-port': '9000', 's3-port': '0' }, env)).toEqual({ api: 8080, engines: { dynamodb: 9000, kinesis: 4567, s3: 0 } });
  });

  it.each([
    [{}, { PORT: '80a' }, "PORT must be a TCP port (0-65535), not '80a'"],
    [{}, { KINESIS_PORT: '70000' }, "KINESIS_PORT must be a TCP port (0-65535), not '70000'"],
    [{ 'dynamodb-port': '-1' }, {}, "--dynamodb-port must be a TCP port (0-65535), not '-1'"],
  ])('refuses %j %j, naming where the value came from', (flags, env, message) => {
    expect(() => localPorts(flags, env)).toThrow(new UsageError(message));
  });
});
