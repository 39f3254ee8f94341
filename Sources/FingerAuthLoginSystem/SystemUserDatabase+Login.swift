import CSystem
import FingerAuthLoginDomain
import FingerAuthSystem

/// The login decision asks the system's user database (getpwnam_r) whether a user exists.
extension SystemUserDatabase: UserDatabase {}
