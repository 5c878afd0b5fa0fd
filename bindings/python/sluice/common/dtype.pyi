"""Type stubs of sluice.common.dtype."""
uint8: str
int32: str
uint32: str
int64: str
float32: str
float64: str
