"""The PostgreSQL backend, on a throwaway cluster."""
