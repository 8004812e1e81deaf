"""The web analytics team's lakehouse: one platform, configured by the stack (Pulumi.<stack>.yaml)."""

from lakehouse_platform.component import LakehousePlatform, export, platform_config

analytics = LakehousePlatform("analytics", platform_config())
export(analytics)  # every output the platform documents, so `lakehouse verify --stack <stack>` can probe it
