"""Building blocks below the services: the shared aws kit (``aws``), components a service's aws half is made of."""
