"""The platform's contracts, one module per domain; each exports its rules as ``POLICIES``.

``lakehouse_platform/policies/registry.py`` assembles them; nothing here imports ``pulumi_policy`` or ``pulumi``.
"""
