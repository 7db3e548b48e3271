import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The README's examples that run against the local stack, taken from the README itself. */
export interface ReadmeExamples {
  /** "Then, in another terminal:" — the curl with the demo key, its stated answer, and the query. */
  tryIt: { curl: string; answer: string; query: string };
  /** The admin CLI block ("Plans, organizations and keys"). */
  admin: string;
  /** The "## Query" block, one command per line. */
  queries: string[];
  /** The OpenTelemetry example: its setup commands (in order) and the complete file, with its name. */
  otel: { environment: string; directory: string; install: string; run: string; fileName: string; code: string };
}

const ROOT = path.resolve(__dirname, '../..');

/** The body of the first fenced block of `language` after `marker`. */
export function blockAfter(readme: string, marker: string, language: string): string {
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README: no '${marker}'`);
  const open = readme.indexOf(`\`\`\`${language}\n`, at);
  const close = readme.indexOf('\n```', open + 4 + language.length);
  if (open < 0 || close < 0) throw new Error(`README: no ${language} block after '${marker}'`);
  return readme.slice(open + 4 + language.length, close + 1);
}

export function readmeExamples(readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')): ReadmeExamples {
  const tryIt = blockAfter(readme, 'Then, in another terminal:', 'sh');
  const lines = tryIt.split('\n');
  const answerLine = lines.findIndex((line) => line.startsWith('# → '));
  const otelSetup = blockAfter(readme, 'In Node, a complete program', 'sh').trim().split('\n');
  const fileName = /with `([\w.-]+\.m?js)`/.exec(readme.slice(readme.indexOf('In Node, a complete program')))?.[1];
  if (answerLine < 0 || !fileName || otelSetup.length !== 4) throw new Error('README: the examples changed shape; update test/support/readme-examples.ts');
  return {
    tryIt: {
      curl: lines.slice(0, answerLine).join('\n'),
      answer: (lines[answerLine] as string).slice('# → '.length),
      query: lines.slice(answerLine + 1).join('\n').trim(),
    },
    admin: blockAfter(readme, 'Plans, organizations and keys of your own', 'sh'),
    queries: blockAfter(readme, '## Query', 'sh').trim().split('\n'),
    otel: {
      environment: otelSetup[0] as string,
      directory: otelSetup[1] as string,
      install: otelSetup[2] as string,
      run: otelSetup[3] as string,
      fileName,
      code: blockAfter(readme, `with \`${fileName}\``, 'js'),
    },
  };
}
