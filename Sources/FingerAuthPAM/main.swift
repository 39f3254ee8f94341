// fingerauth-pam: the module's decisions, made outside the PAM host
// (docs/ARCHITECTURE.md, "The module and fingerauth-pam"). pam_fingerauth.so starts it
// for each call, clean, with the host's credentials (root as every uid when the host's
// effective uid is 0), and answers its `ModuleCall`s; this process reads the
// configuration, tells a remote session, keeps the attempts and runs the login (the login
// helper started from here, or fingerauth-agent for a host that runs as the user). Built in
// Embedded Swift like the module (scripts/build-module.sh): no Swift runtime to start.
runFingerAuthPAM()
