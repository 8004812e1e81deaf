"""The aws target: the same seven layers on an AWS account (``target.AwsTarget``), and what every service's aws
part shares: the context and foundation, the network, KMS and roles, the reusable components (``SecureBucket``,
``FargateService``, the catalogs' load balancer), the log groups, the alarms, the backups."""
