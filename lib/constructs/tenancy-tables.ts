import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption, type Attribute } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { RATE_TABLE, TENANCY_TABLE, type AttributeDefinition, type TableDefinition } from '../../lambda/shared/tables.js';
import { KEPT_UNLESS_CREATE_ROLLED_BACK } from './kept-resources.js';

/**
 * The two DynamoDB tables, built from the shared definitions so the schema has one source:
 * on demand, point-in-time recovery, encrypted, deletion-protected, retained when the stack is deleted.
 */
export class TenancyTables extends Construct {
  /** Organizations, workspaces and API key hashes. */
  public readonly tenancyTable: Table;
  /** Rate-window counters (TTL-cleaned) and idempotency records. */
  public readonly rateTable: Table;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    this.tenancyTable = tableFrom(this, TENANCY_TABLE);
    this.rateTable = tableFrom(this, RATE_TABLE);
  }
}

function tableFrom(scope: Construct, definition: TableDefinition): Table {
  const table = new Table(scope, definition.logicalName, {
    partitionKey: attribute(definition.partitionKey),
    sortKey: attribute(definition.sortKey),
    billingMode: BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: TableEncryption.AWS_MANAGED,
    deletionProtection: true,
    removalPolicy: KEPT_UNLESS_CREATE_ROLLED_BACK,
    ...(definition.timeToLiveAttribute === undefined ? {} : { timeToLiveAttribute: definition.timeToLiveAttribute }),
  });
  for (const index of definition.globalIndexes) {
    table.addGlobalSecondaryIndex({
      indexName: index.indexName,
      partitionKey: attribute(index.partitionKey),
      ...(index.sortKey === undefined ? {} : { sortKey: attribute(index.sortKey) }),
      projectionType: ProjectionType.ALL,
    });
  }
  return table;
}

function attribute(definition: AttributeDefinition): Attribute {
  return { name: definition.name, type: definition.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER };
}
