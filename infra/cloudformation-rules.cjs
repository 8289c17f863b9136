// An osls plugin that lets the `resources` section carry CloudFormation Rules: assertions on the parameters
// that CloudFormation checks on every deploy, also when a parameter is changed without packaging again
// (infra/parameters.yml). osls merges the section into the template like the others; only its
// configuration schema does not know it.
'use strict';

module.exports = class CloudFormationRules {
  constructor(serverless) {
    const resources = serverless.configSchemaHandler.schema.properties.resources;
    resources.properties.Rules = { type: 'object' };
  }
};
