// The AWS Parameters and Secrets Lambda Extension layer (arm64) the ingest runs with, pinned: one layer version per
// region, from AWS's table of the extension's ARNs ("Extension ARNs for ARM64", last updated July 28, 2026, in
// "Using Parameter Store parameters in AWS Lambda functions"). A deploy never moves to a newer version by itself:
// a stage takes another with `--param paramsSecretsLayerArn=<arn>`, and this table is updated on purpose, after a
// new version has run on a stage (docs/deployment.md, "Deploy", the stage parameters).
'use strict';

const layer = (partition, region, account, version) =>
  `arn:${partition}:lambda:${region}:${account}:layer:AWS-Parameters-and-Secrets-Lambda-Extension-Arm64:${version}`;

module.exports = {
  'us-east-2': layer('aws', 'us-east-2', '590474943231', 109),
  'us-east-1': layer('aws', 'us-east-1', '177933569100', 99),
  'us-west-1': layer('aws', 'us-west-1', '997803712105', 93),
  'us-west-2': layer('aws', 'us-west-2', '345057560386', 99),
  'af-south-1': layer('aws', 'af-south-1', '317013901791', 97),
  'ap-east-1': layer('aws', 'ap-east-1', '768336418462', 94),
  'ap-east-2': layer('aws', 'ap-east-2', '890742577149', 65),
  'ap-south-2': layer('aws', 'ap-south-2', '070087711984', 83),
  'ap-southeast-3': layer('aws', 'ap-southeast-3', '490737872127', 91),
  'ap-southeast-4': layer('aws', 'ap-southeast-4', '090732460067', 83),
  'ap-southeast-5': layer('aws', 'ap-southeast-5', '381492012281', 83),
  'ap-southeast-6': layer('aws', 'ap-southeast-6', '995508174458', 76),
  'ap-south-1': layer('aws', 'ap-south-1', '176022468876', 95),
  'ap-northeast-3': layer('aws', 'ap-northeast-3', '576959938190', 91),
  'ap-northeast-2': layer('aws', 'ap-northeast-2', '738900069198', 96),
  'ap-southeast-1': layer('aws', 'ap-southeast-1', '044395824272', 101),
  'ap-southeast-2': layer('aws', 'ap-southeast-2', '665172237481', 105),
  'ap-southeast-7': layer('aws', 'ap-southeast-7', '941377119484', 83),
  'ap-northeast-1': layer('aws', 'ap-northeast-1', '133490724326', 100),
  'ca-central-1': layer('aws', 'ca-central-1', '200266452380', 104),
  'ca-west-1': layer('aws', 'ca-west-1', '243964427225', 70),
  'cn-north-1': layer('aws-cn', 'cn-north-1', '287114880934', 89),
  'cn-northwest-1': layer('aws-cn', 'cn-northwest-1', '287310001119', 83),
  'eu-central-1': layer('aws', 'eu-central-1', '187925254637', 101),
  'eu-west-1': layer('aws', 'eu-west-1', '015030872274', 101),
  'eu-west-2': layer('aws', 'eu-west-2', '133256977650', 99),
  'eu-south-1': layer('aws', 'eu-south-1', '325218067255', 92),
  'eu-west-3': layer('aws', 'eu-west-3', '780235371811', 95),
  'eu-south-2': layer('aws', 'eu-south-2', '524103009944', 82),
  'eu-north-1': layer('aws', 'eu-north-1', '427196147048', 92),
  'il-central-1': layer('aws', 'il-central-1', '148806536434', 70),
  'eu-central-2': layer('aws', 'eu-central-2', '772501565639', 70),
  'mx-central-1': layer('aws', 'mx-central-1', '241533131596', 67),
  'me-south-1': layer('aws', 'me-south-1', '832021897121', 55),
  'me-central-1': layer('aws', 'me-central-1', '858974508948', 49),
  'sa-east-1': layer('aws', 'sa-east-1', '933737806257', 100),
  'us-gov-east-1': layer('aws-us-gov', 'us-gov-east-1', '129776340158', 84),
  'us-gov-west-1': layer('aws-us-gov', 'us-gov-west-1', '127562683043', 87),
};
