/**
 * The suites that assert on the stack with the default configuration. Jest gives every test file its
 * own module registry, so a stack built in one file cannot be reused by another: the suites are
 * modules of this one file and share `defaultStack()`, synthesized once (unbundled) for all of them.
 * Each module registers its own `describe` when imported.
 */
import './default-stack/cfn-lint.js';
import './default-stack/compaction.js';
import './default-stack/data.js';
import './default-stack/deploy-checklist.js';
import './default-stack/functions.js';
import './default-stack/grants.js';
import './default-stack/ingest-api.js';
import './default-stack/monitoring.js';
import './default-stack/nag.js';
import './default-stack/operations.js';
import './default-stack/retention.js';
