"""sluice.train.serialization: checkpoints, as ``mindspore.save_checkpoint``,
``load_checkpoint`` and ``load_param_into_net``.

The files are sluice's own format, the one ``sluice train --save`` and
:class:`~sluice.train.ModelCheckpoint` write (``sluice/checkpoint.h``):
little-endian, ``"SLUICECK"``, the version (1 or 2), the parameter count
and the global step, then each parameter (name, float32, shape, values),
in version 2 the data position (40 bytes: where a resumed run reads on),
then a CRC-32 of everything before it. Saving writes a temporary file and renames
it into place.
"""
import os
import struct
import zlib

from sluice import _sluice, nn

__all__ = ["save_checkpoint", "load_checkpoint", "load_param_into_net"]

_MAGIC = b"SLUICECK"
_FLOAT32 = 4  # sl_dtype's SL_FLOAT32
_POSITION_BYTES = 40  # version 2's data position, before the CRC


def _model_c(save_obj):
    """The C model whose save() writes save_obj, or None for a Cell of the
    user's whose values no single model holds (written from Python)."""
    from sluice.train.model import Model
    if isinstance(save_obj, nn.TrainOneStepCell):
        save_obj = save_obj._get_model()
    if isinstance(save_obj, Model):
        if save_obj._c is None:   # a Cell of the user's, not compiled yet
            return _model_c(save_obj.network)
        save_obj._claim()   # the network's latest values, wherever they are
        return save_obj._c
    if isinstance(save_obj, nn.LeNet5):
        if save_obj._owner is None:
            raise ValueError("save_checkpoint: the network is in no Model yet (its values live "
                             "in the Model that trains it)")
        return save_obj._owner
    if isinstance(save_obj, nn.Cell):
        # The model that trained the cell holds its values, its optimizer's
        # accumulators and the step; it may be written whole when it holds
        # exactly this cell's parameters, under their names.
        params = save_obj.trainable_params()
        owners = {id(p._owner) for p in params}
        owner = params[0]._owner if params else None
        # (a step run on tensors holds values too, but is no model: no step
        # count or accumulators to write, so its values go from Python)
        if isinstance(owner, _sluice.Model) and len(owners) == 1 \
                and all(p._cname == p.name for p in params) \
                and sorted(n for n, _ in owner.params()) == sorted(p.name for p in params):
            return owner
        return None
    raise TypeError(f"save_checkpoint: give a Model or a network, got {type(save_obj).__name__}")


def _write(path, params):
    """Writes [(name, float32 array)] as a version 1 checkpoint (global step
    0), through a temporary file renamed into place."""
    import numpy as np
    out = [_MAGIC, struct.pack("<IIq", 1, len(params), 0)]
    for name, values in params:
        raw = name.encode()
        values = np.ascontiguousarray(values, dtype="<f4")
        out.append(struct.pack("<H", len(raw)) + raw)
        out.append(struct.pack(f"<BB{values.ndim}q", _FLOAT32, values.ndim, *values.shape))
        out.append(values.tobytes())
    data = b"".join(out)
    data += struct.pack("<I", zlib.crc32(data))
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_checkpoint(save_obj, ckpt_file_name):
    """Writes the parameters of a network (of the Model that holds its
    values), a Model or a TrainOneStepCell to ``ckpt_file_name``, with the
    optimizer's accumulators (``moments.<name>``) and the global step.
    A Cell of your own is written the same way once a Model, data_sink or
    DatasetHelper has trained it; before that (or when its parameters are
    spread over several models) its parameters alone are written, at step
    0. OSError when the file cannot be written."""
    path = os.fspath(ckpt_file_name)
    model_c = _model_c(save_obj)
    if model_c is not None:
        model_c.save(path)
    else:
        net = getattr(save_obj, "network", save_obj)   # a Model not compiled yet: its network
        _write(path, [(p.name, p.asnumpy()) for p in net.trainable_params()])


def _read(path):
    import numpy as np
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 28 or data[:8] != _MAGIC:
        raise OSError(f"{path}: not a sluice checkpoint (no SLUICECK header)")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
        raise OSError(f"{path}: the CRC does not match: the file is corrupt or truncated")
    version, count, _ = struct.unpack_from("<IIq", data, 8)
    if version not in (1, 2):
        raise OSError(f"{path}: checkpoint version {version}; this sluice reads 1 and 2")
    end = len(data) - 4 - (_POSITION_BYTES if version == 2 else 0)
    pos, params = 24, {}
    try:
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, pos)
            name = data[pos + 2:pos + 2 + length].decode()
            pos += 2 + length
            dtype, ndim = data[pos], data[pos + 1]
            shape = struct.unpack_from(f"<{ndim}q", data, pos + 2)
            pos += 2 + 8 * ndim
            numel = 1
            for n in shape:
                numel *= n
            if dtype != _FLOAT32 or pos + 4 * numel > end:
                raise ValueError
            values = np.frombuffer(data, "<f4", numel, pos).astype(np.float32).reshape(shape)
            pos += 4 * numel
            params[name] = nn.Parameter(name, shape, _data=values)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError):
        raise OSError(f"{path}: malformed parameter entry at byte {pos}") from None
    if pos != end:
        raise OSError(f"{path}: {end - pos} bytes after the last parameter")
    return params


def load_checkpoint(ckpt_file_name, net=None):
    """The parameters in a checkpoint as ``{name: Parameter}`` (the
    network's and the optimizer's accumulators, ``moments.<name>``). With
    ``net``, also loads them into it (:func:`load_param_into_net`).
    FileNotFoundError / OSError for a missing, corrupt or truncated file."""
    params = _read(os.fspath(ckpt_file_name))
    if net is not None:
        load_param_into_net(net, params)
    return params


def load_param_into_net(net, parameter_dict):
    """Sets the parameters of ``net`` found in ``parameter_dict`` (``{name:
    Parameter or array}``); other entries (an optimizer's accumulators) are
    left out. Returns the names of the network's parameters the dict does
    not hold. ValueError when a value's shape is not the parameter's."""
    if not isinstance(net, nn.Cell):
        raise TypeError(f"load_param_into_net: give a network, got {type(net).__name__}")
    missing = []
    for param in net.trainable_params():
        if param.name in parameter_dict:
            param.set_data(parameter_dict[param.name])
        else:
            missing.append(param.name)
    return missing
