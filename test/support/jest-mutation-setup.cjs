// Set up each test file of a mutation run (bench/mutation.ts).
// - A property that fails under a mutant only needs to fail: fast-check would go on to shrink the counterexample,
//   rerunning the property many times for a smaller one, which tells Stryker nothing and costs every killed mutant
//   seconds.
// - One seed: whether a property's draws catch a mutant is then the same in every run, so a module's score does not
//   move from run to run (npm test keeps drawing afresh).
const fc = require('fast-check');

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true, seed: 30 });
