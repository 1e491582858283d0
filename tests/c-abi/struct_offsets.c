/* Prints the layout of the C plugin ABI's structs as `name value` lines. */
#include <stdio.h>

#include <xpuprof/plugin.h>

#define SIZE(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("%s.%s %zu\n", #t, #f, offsetof(t, f))

int main(void) {
    SIZE(xpuprof_text);
    OFF(xpuprof_text, ptr);
    OFF(xpuprof_text, len);
    SIZE(xpuprof_host);
    OFF(xpuprof_host, size);
    OFF(xpuprof_host, abi_version);
    OFF(xpuprof_host, ctx);
    OFF(xpuprof_host, emit);
    OFF(xpuprof_host, log);
    OFF(xpuprof_host, set_error);
    SIZE(xpuprof_create_info);
    OFF(xpuprof_create_info, size);
    OFF(xpuprof_create_info, verbosity);
    OFF(xpuprof_create_info, output_dir);
    OFF(xpuprof_create_info, start_time);
    OFF(xpuprof_create_info, args_toml);
    OFF(xpuprof_create_info, config);
    OFF(xpuprof_create_info, get_int);
    OFF(xpuprof_create_info, get_float);
    OFF(xpuprof_create_info, get_bool);
    OFF(xpuprof_create_info, get_str);
    SIZE(xpuprof_env);
    OFF(xpuprof_env, size);
    OFF(xpuprof_env, ctx);
    OFF(xpuprof_env, set);
    SIZE(xpuprof_files);
    OFF(xpuprof_files, size);
    OFF(xpuprof_files, ctx);
    OFF(xpuprof_files, add);
    SIZE(xpuprof_checks);
    OFF(xpuprof_checks, size);
    OFF(xpuprof_checks, ctx);
    OFF(xpuprof_checks, add);
    SIZE(xpuprof_backend_name);
    OFF(xpuprof_backend_name, id);
    OFF(xpuprof_backend_name, name);
    SIZE(xpuprof_plugin);
    OFF(xpuprof_plugin, size);
    OFF(xpuprof_plugin, abi_version);
    OFF(xpuprof_plugin, kind);
    OFF(xpuprof_plugin, reserved);
    OFF(xpuprof_plugin, name);
    OFF(xpuprof_plugin, version);
    OFF(xpuprof_plugin, description);
    OFF(xpuprof_plugin, header_version);
    OFF(xpuprof_plugin, config_schema);
    OFF(xpuprof_plugin, capabilities);
    OFF(xpuprof_plugin, create);
    OFF(xpuprof_plugin, prepare);
    OFF(xpuprof_plugin, start);
    OFF(xpuprof_plugin, stop);
    OFF(xpuprof_plugin, consume);
    OFF(xpuprof_plugin, finish);
    OFF(xpuprof_plugin, destroy);
    OFF(xpuprof_plugin, set_capture);
    OFF(xpuprof_plugin, attach);
    OFF(xpuprof_plugin, machine_checks);
    OFF(xpuprof_plugin, backends);
    OFF(xpuprof_plugin, default_source);
    OFF(xpuprof_plugin, reserved2);
    return 0;
}
