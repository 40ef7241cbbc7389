"""Provider keys and accounts: the credential store (keyring, or a 0600 file) and profiles."""

from aimon_core.credentials._profiles import (
    PROVIDERS,
    KeySource,
    Profile,
    ProfileError,
    Profiles,
    check_name,
    find_key,
    key_variable,
    provider_environment,
)
from aimon_core.credentials._store import (
    SERVICE,
    CredentialError,
    CredentialStore,
    KeyringLike,
    LocalCredentialStore,
    Place,
    StoredCredential,
    system_keyring,
)

__all__ = [
    "PROVIDERS",
    "SERVICE",
    "CredentialError",
    "CredentialStore",
    "KeySource",
    "KeyringLike",
    "LocalCredentialStore",
    "Place",
    "Profile",
    "ProfileError",
    "Profiles",
    "StoredCredential",
    "check_name",
    "find_key",
    "key_variable",
    "provider_environment",
    "system_keyring",
]
