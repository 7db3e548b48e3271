// Set up each test file of a mutation run (bench/mutation.ts). A property that fails under a mutant only needs to
// fail: fast-check would go on to shrink the counterexample, rerunning the property many times for a smaller one,
// which tells Stryker nothing and costs every killed mutant seconds.
const fc = require('fast-check');

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true });
