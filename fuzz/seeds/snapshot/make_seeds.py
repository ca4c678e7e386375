# Makes the torch_snapshot_fuzz seeds: one small CUDA memory snapshot with every trace action
# (the keys torch.cuda.memory._dump_snapshot writes), pickled with protocols 2 to 5.
#   python3 fuzz/seeds/snapshot/make_seeds.py fuzz/seeds/snapshot
import pickle
import sys

M = 1 << 20
frames = [{"name": "forward", "filename": "/m/model.py", "line": 3},
          {"name": "_call_impl", "filename": "/t/torch/nn/modules/module.py", "line": 1790}]
opt = [{"name": "step", "filename": "/t/torch/optim/adam.py", "line": 9}]
snap = {
    "segments": [{"device": 0, "address": 1 << 40, "total_size": 64 * M, "allocated_size": 8 * M,
                  "active_size": 8 * M, "requested_size": 8 * M, "stream": 0,
                  "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": True,
                  "frames": frames,
                  "blocks": [{"address": 1 << 40, "size": 8 * M, "requested_size": 8 * M - 3,
                              "state": "active_allocated", "frames": frames},
                             {"address": (1 << 40) + 8 * M, "size": 56 * M, "requested_size": 0,
                              "state": "inactive", "frames": []}]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": 1 << 40, "size": 64 * M, "stream": 0, "time_us": 1, "frames": frames},
        {"action": "alloc", "addr": 1 << 40, "size": 8 * M, "stream": 0, "time_us": 2, "frames": frames,
         "compile_context": "N/A", "user_metadata": ""},
        {"action": "alloc", "addr": (1 << 40) + 8 * M, "size": 4 * M, "stream": 0, "time_us": 3, "frames": opt},
        {"action": "free_requested", "addr": (1 << 40) + 8 * M, "size": 4 * M, "stream": 0, "time_us": 4, "frames": []},
        {"action": "free_completed", "addr": (1 << 40) + 8 * M, "size": 4 * M, "stream": 0, "time_us": 5, "frames": []},
        {"action": "segment_map", "addr": 1 << 41, "size": 2 * M, "stream": 0, "time_us": 6, "frames": []},
        {"action": "segment_unmap", "addr": 1 << 41, "size": 2 * M, "stream": 0, "time_us": 7, "frames": []},
        {"action": "oom", "addr": 0, "size": 60 * M, "stream": 0, "time_us": 8, "device_free": 1024, "frames": frames},
        {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 9, "frames": []},
        {"action": "segment_free", "addr": 1 << 42, "size": 0, "stream": 0, "time_us": 10, "frames": []},
    ], []],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "max_split_size": -1,
                           "garbage_collection_threshold": 0.0, "expandable_segments": True,
                           "roundup_power2_divisions": {"1": 0, "2": 0}},
    "external_annotations": [{"stage": "START", "name": "a", "device": 0, "time_us": 1}],
}
for protocol in (2, 3, 4, 5):
    with open(f"{sys.argv[1]}/snapshot_p{protocol}.pickle", "wb") as f:
        f.write(pickle.dumps(snap, protocol=protocol))
