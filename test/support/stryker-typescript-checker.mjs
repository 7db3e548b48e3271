// Stryker's TypeScript checker, without tsc's 250 ms wait before each check (bench/mutation.ts).
// The checker drives tsc's solution builder in watch mode: writing each group of mutants into the program is a file
// change, and the builder answers a change only after a 250 ms debounce (`invalidateProjectAndScheduleBuilds` in
// typescript.js), meant for an editor's keystrokes. Nothing else writes to the checker's in-memory files, so the wait
// buys nothing: it was most of the checker's time (one module: ~300 s checked with the wait, ~120 s tested without
// any checker), and the checker held back every test runner. The builder here is the same, but its timers fire at once.
import ts from 'typescript';
import { PluginKind, commonTokens, declareFactoryPlugin, tokens } from '@stryker-mutator/api/plugin';
import { createTypescriptChecker } from '@stryker-mutator/typescript-checker';

function createPromptTypescriptChecker(injector) {
  const checker = createTypescriptChecker(injector);
  const init = checker.init.bind(checker);
  // The checker's compiler host copies `ts.sys` once, when init starts; the process's `ts.sys` is left as it was.
  checker.init = async () => {
    const { setTimeout: delayed } = ts.sys;
    ts.sys.setTimeout = (callback, _ms, ...args) => setTimeout(callback, 0, ...args);
    try {
      return await init();
    } finally {
      ts.sys.setTimeout = delayed;
    }
  };
  return checker;
}
createPromptTypescriptChecker.inject = tokens(commonTokens.injector);

export const strykerPlugins = [declareFactoryPlugin(PluginKind.Checker, 'typescript-prompt', createPromptTypescriptChecker)];
