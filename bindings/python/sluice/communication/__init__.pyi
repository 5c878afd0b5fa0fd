"""Type stubs of sluice.communication."""
from sluice.communication import management as management
from sluice.communication.management import (get_group_size as get_group_size,
                                             get_rank as get_rank, init as init,
                                             release as release)
