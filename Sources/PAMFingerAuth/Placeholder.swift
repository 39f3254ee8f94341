public enum PAMFingerAuthPlaceholder {}
