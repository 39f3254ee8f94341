import CFPrint

/// A finger, named as libfprint and fprintd name it (`right-index-finger`); the name is
/// also the print's file name (`right-index-finger.fpt`).
package enum Finger: String, CaseIterable, Sendable {
    case leftThumb = "left-thumb"
    case leftIndex = "left-index-finger"
    case leftMiddle = "left-middle-finger"
    case leftRing = "left-ring-finger"
    case leftLittle = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndex = "right-index-finger"
    case rightMiddle = "right-middle-finger"
    case rightRing = "right-ring-finger"
    case rightLittle = "right-little-finger"

    /// The libfprint value (`FpFinger`) set on enrolled prints.
    package var fpFinger: FpFinger {
        switch self {
        case .leftThumb: return FP_FINGER_LEFT_THUMB
        case .leftIndex: return FP_FINGER_LEFT_INDEX
        case .leftMiddle: return FP_FINGER_LEFT_MIDDLE
        case .leftRing: return FP_FINGER_LEFT_RING
        case .leftLittle: return FP_FINGER_LEFT_LITTLE
        case .rightThumb: return FP_FINGER_RIGHT_THUMB
        case .rightIndex: return FP_FINGER_RIGHT_INDEX
        case .rightMiddle: return FP_FINGER_RIGHT_MIDDLE
        case .rightRing: return FP_FINGER_RIGHT_RING
        case .rightLittle: return FP_FINGER_RIGHT_LITTLE
        }
    }
}
