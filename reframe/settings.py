"""ReFrame site configuration for gpurelay's checks: scripts/local-slurm's cluster (export
SLURM_CONF=DIR/slurm.conf first) and a workstation (mpirun here). A site adds its own system or
partitions beside these; pick one with --system NAME."""

site_configuration = {
    "systems": [
        {
            "name": "local-slurm",
            "descr": "scripts/local-slurm: nodes with stand-in GPUs on this machine",
            "hostnames": [".*"],
            "partitions": [{
                "name": "debug",
                # No accounting there, so no sacct: squeue follows the jobs.
                "scheduler": "squeue",
                "launcher": "srun",
                "access": ["--partition=debug"],
                "environs": ["builtin"],
                "max_jobs": 1,
            }],
        },
        {
            "name": "workstation",
            "descr": "mpirun on this machine",
            "hostnames": [".*"],
            "partitions": [{
                "name": "default",
                "scheduler": "local",
                "launcher": "mpirun",
                "environs": ["builtin"],
                "max_jobs": 1,
                # More ranks than cores, and root (containers): Open MPI refuses both unless told.
                "env_vars": [["OMPI_MCA_rmaps_base_oversubscribe", "1"],
                             ["OMPI_ALLOW_RUN_AS_ROOT", "1"],
                             ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"]],
            }],
        },
    ],
    "environments": [{"name": "builtin"}],
    # Logging is ReFrame's own: a performance log per check under perflogs/SYSTEM/PARTITION/.
}
